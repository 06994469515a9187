"""Pure: a session as the contract shows it, and the labels people read."""
