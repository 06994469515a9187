"""Pure: sessions of other machines, and the ssh commands that reach them."""
