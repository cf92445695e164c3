"""`holodesk eval grounding` and `holodesk eval compare`: grounding benchmarks through Locate.

The readers and scorers are holodesk.data.grounding's (shared with the daemon's
`model check`); this package runs them against a daemon: command.py (the CLI),
runner.py (Locate calls in flight, answers), predictions.py (the resumable
prediction file), manifest.py (what makes two runs comparable), outputs.py
(summary and report), compare.py (`eval compare`).
"""
