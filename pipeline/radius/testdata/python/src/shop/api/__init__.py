from ..cart import (
    Cart,  # the cart
)
