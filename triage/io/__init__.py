"""The bottom layer: bounded readers, atomic writers and the files shipped inside the package."""
