"""`holodesk locate`: find described things on screenshots.

locate.py grounds one image (the daemon call); batch.py runs a folder or a manifest and
resumes; command.py is the CLI.
"""
