class Money:
    pass
