"""``mqadmin bench``: reproducible speed and memory figures, each a ratio to a floor
measured in the same run on the same machine."""
