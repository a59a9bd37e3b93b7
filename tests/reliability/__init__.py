"""The reliability suite: faults, hostile input, secrets, terminal safety, load."""
