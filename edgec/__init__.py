"""edgec: float ONNX model + calibration set -> INT8 firmware for microcontrollers."""

__version__ = "0.1.0"
