#include "CSwscale.h"
