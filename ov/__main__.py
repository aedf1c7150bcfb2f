from ov.cli import main

main()
