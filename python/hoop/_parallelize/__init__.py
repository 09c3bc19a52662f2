"""hoop-parallelize's parts (hoop/parallelize.py has the converter and the command)."""
