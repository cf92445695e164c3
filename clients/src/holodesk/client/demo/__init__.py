"""`holodesk demo`: the whole stack on a virtual desktop, no GPU."""
