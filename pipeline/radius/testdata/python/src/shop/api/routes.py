import os, \
    shop.cart as c
