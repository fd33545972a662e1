"""How a teammate process is started and stopped: tmux panes or plain subprocesses."""
