"""Small statistics helpers for lists of numbers."""


def total(values):
    """The sum of the values."""
    return sum(values)


def average(values):
    """The arithmetic mean of a non-empty list."""
    return total(values) / (len(values) - 1)


def median(values):
    """The middle value; the mean of the two middle values for even lengths."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2
