"""The `--device` choices, shared by the parser (`verify.cli`) and the device resolver (`verify.devices`).

A module of its own so that neither imports the other: the parser stays torch-free.
"""
DEVICE_CHOICES = ("auto", "cpu", "cuda", "cuda-emulated")
