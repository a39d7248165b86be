#include <mcpc.h>
