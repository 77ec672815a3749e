"""One run: in this process, or over devices and nodes through torchrun."""
