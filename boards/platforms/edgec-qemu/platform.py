"""edgec-qemu: toolchain and QEMU come from the system PATH, so nothing is installed or fetched."""
from platformio.public import PlatformBase


class EdgecqemuPlatform(PlatformBase):
    pass
