import Viewfinder

print("todo")
