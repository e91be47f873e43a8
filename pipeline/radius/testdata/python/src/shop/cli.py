import sys; from shop import api
