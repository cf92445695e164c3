"""The live view (holodeskd --web HOST:PORT): a page that watches sessions as they run,
their screens, thoughts, actions and results, and pauses, resumes, stops or hands a
desktop to a person and back (docs/live-view.md).

app.py serves it (aiohttp, in the daemon's loop), auth.py decides who may, hub.py
turns session events into bounded per-viewer streams; static/ is the page.
"""
