"""`holodesk report`: a recording as a self-contained HTML report."""
