"""macOS internals of the `quartz` backend; see `holodesk.platform.macos.backend`.

Only `quartz_api` touches the OS (pyobjc) and is imported only on macOS; every other
module here is pure logic, built and tested on any OS against a fake `QuartzApi`.
"""
