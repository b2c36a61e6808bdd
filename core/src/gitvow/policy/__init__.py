"""The policy: a table of operation → rule (``table``) and the file an operator writes (``file``)."""
