def load():
    if True: from shop import money
    return money
