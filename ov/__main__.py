from ov.cli import entry

entry()
