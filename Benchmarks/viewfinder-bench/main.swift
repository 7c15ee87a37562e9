import Viewfinder
print("todo")
