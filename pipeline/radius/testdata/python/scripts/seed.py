from shop.money import Money
