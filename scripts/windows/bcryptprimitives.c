/* A stand-in for Windows' bcryptprimitives.dll, for Wine releases older than 9.0 (Debian 12 has
 * Wine 8.0), which lack it. Rust's standard library (1.78 and later) imports ProcessPrng from
 * it for its random seeds, so without it no Rust program or DLL for Windows starts under that
 * Wine ("Library bcryptprimitives.dll ... not found"). scripts/wine-env.sh builds it with
 * mingw-w64 and puts it in the Wine prefix's system32; it is never shipped or used on Windows.
 * ProcessPrng fills the buffer from the system's generator and, like the real one, always
 * succeeds. */
#include <windows.h>

/* advapi32's RtlGenRandom, exported as SystemFunction036. */
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk)) {
            return FALSE;
        }
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
