"""erase."""
