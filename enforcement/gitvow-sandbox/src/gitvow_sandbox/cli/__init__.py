"""The sandbox's commands: ``gitvow run``."""
