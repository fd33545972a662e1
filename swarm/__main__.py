from swarm.cli.entry import main

main()
