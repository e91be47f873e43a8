from shop.money import Money as M
