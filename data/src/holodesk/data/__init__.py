"""Session recordings: the versioned on-disk format, its writer and reader, and what
is built from recordings (training datasets, HTML reports). Knows no gRPC and no OS."""
