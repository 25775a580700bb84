def unfinished(x:
    return x
