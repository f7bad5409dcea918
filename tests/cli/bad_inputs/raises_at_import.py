raise RuntimeError("this module fails while it is imported")
