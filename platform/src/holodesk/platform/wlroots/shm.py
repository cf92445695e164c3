"""Shared-memory buffers: where the compositor writes a screencopy frame."""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass
from typing import Any


@dataclass
class ShmBuffer:
    """A wl_buffer over a memfd of `stride * height` bytes, mapped here too."""

    buffer: Any
    pool: Any
    memory: mmap.mmap
    fd: int
    width: int
    height: int
    stride: int
    format: int

    @classmethod
    def create(cls, shm: Any, width: int, height: int, stride: int, format: int) -> ShmBuffer:
        size = stride * height
        fd = os.memfd_create("holodesk-screencopy", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, size)
            memory = mmap.mmap(fd, size)
            pool = shm.create_pool(fd, size)
            buffer = pool.create_buffer(0, width, height, stride, format)
        except BaseException:
            os.close(fd)
            raise
        return cls(buffer, pool, memory, fd, width, height, stride, format)

    def matches(self, width: int, height: int, stride: int, format: int) -> bool:
        return (self.width, self.height, self.stride, self.format) == (
            width,
            height,
            stride,
            format,
        )

    def destroy(self) -> None:
        self.buffer.destroy()
        self.pool.destroy()
        self.memory.close()
        os.close(self.fd)
