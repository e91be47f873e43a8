from .money import Money


class Cart:
    total = Money()
