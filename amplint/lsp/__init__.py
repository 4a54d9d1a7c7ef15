"""`amplint server`: a Language Server over stdio (pygls)."""
