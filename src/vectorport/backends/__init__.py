"""Backend implementations, one folder each. Import them through :func:`vectorport.connect`."""
