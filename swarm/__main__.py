from swarm.cli.main import main

main()
