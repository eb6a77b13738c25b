"""The numeric core: the matrix as columns, the roofline, mechanisms, the layers of evidence, verdict codes.

Numbers only: no prose, no file I/O. Every array is in SI base units.
"""
