"""Local pages for the web backend's tests, served from 127.0.0.1 on a free port.

Every page runs RECORDER: it logs each input event it sees (capture phase, on
window) as a plain object into `window.events`, and into sessionStorage, so the
log of a page survives a navigation to another page of the same site.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

RECORDER = """
<script>
window.events = JSON.parse(sessionStorage.getItem("events") || "[]");
const KINDS = ["mousedown", "mouseup", "click", "dblclick", "auxclick", "contextmenu",
  "mousemove", "wheel", "keydown", "keyup", "input"];
for (const kind of KINDS) {
  window.addEventListener(kind, (e) => {
    window.events.push({
      type: e.type, page: location.pathname, target: e.target.id || e.target.nodeName,
      x: e.clientX, y: e.clientY, button: e.button, buttons: e.buttons, detail: e.detail,
      ctrl: e.ctrlKey, shift: e.shiftKey, alt: e.altKey, meta: e.metaKey,
      key: e.key, code: e.code, keyCode: e.keyCode, repeat: e.repeat,
      deltaX: e.deltaX, deltaY: e.deltaY, deltaMode: e.deltaMode,
      data: e.data, inputType: e.inputType,
    });
    sessionStorage.setItem("events", JSON.stringify(window.events));
    if (kind === "contextmenu") e.preventDefault();
  }, true);
}
</script>
"""

_STYLE = "<style>body{margin:0;font:16px sans-serif}</style>"


def page(title: str, body: str) -> str:
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>{_STYLE}"
        f"{RECORDER}</head><body>{body}</body></html>"
    )


# A page with something at known CSS pixels, and room to scroll both ways.
EVENTS_PAGE = page(
    "events",
    """
<input id="field" style="position:absolute;left:20px;top:20px;width:400px;height:30px">
<textarea id="area" style="position:absolute;left:20px;top:70px;width:400px;height:90px">
</textarea>
<button id="go" style="position:absolute;left:450px;top:20px;width:120px;height:40px"
  onclick="document.title='clicked'">Go</button>
<div id="pad" style="position:absolute;left:0;top:200px;width:1280px;height:600px;
  background:#eee"></div>
<div id="spacer" style="position:absolute;left:0;top:0;width:4000px;height:4000px;
  z-index:-1"></div>
""",
)

# Solid colours at known CSS pixels, for screenshots and exact hit-testing.
PIXELS_PAGE = page(
    "pixels",
    """
<div style="position:fixed;inset:0;background:rgb(10,20,30)"></div>
<div id="dot" style="position:fixed;left:100px;top:50px;width:1px;height:1px;
  background:rgb(255,0,0)"></div>
<div id="block" style="position:fixed;left:200px;top:100px;width:40px;height:20px;
  background:rgb(0,0,255)"></div>
""",
)

SECOND_PAGE = page("second", "<h1 id='second'>second page</h1>")

POPUP_PAGE = page(
    "opener",
    """
<a id="open" href="/second.html" target="_blank"
  style="position:absolute;left:20px;top:20px;width:200px;height:40px;display:block">open</a>
""",
)

PAGES: Mapping[str, str] = {
    "events.html": EVENTS_PAGE,
    "pixels.html": PIXELS_PAGE,
    "second.html": SECOND_PAGE,
    "popup.html": POPUP_PAGE,
}


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def serve_pages(root: Path, pages: Mapping[str, str] = PAGES) -> Iterator[str]:
    """Write `pages` under root and serve them; yields the base URL ("http://127.0.0.1:N")."""
    for name, html in pages.items():
        (root / name).write_text(html, encoding="utf-8")
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="web-site", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
