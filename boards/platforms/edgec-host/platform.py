"""edgec-host: the host's own gcc builds the firmware; nothing is installed or fetched."""
from platformio.public import PlatformBase


class EdgechostPlatform(PlatformBase):
    pass
