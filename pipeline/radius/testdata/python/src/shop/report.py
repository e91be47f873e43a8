# import shop.money
"""
from shop.money import Money
"""
NOTE = "import shop.money"
OTHER = r'from shop.money import x'
