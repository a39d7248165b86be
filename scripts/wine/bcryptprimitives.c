/*
 * A stand-in for bcryptprimitives.dll, for running Rust programs under wine 8 (Debian 12's),
 * which lacks the DLL. Rust's standard library (1.78 and later) takes its random numbers
 * from ProcessPrng there; without the DLL no Rust program starts. Windows itself always has
 * the real DLL: this file is for the wine test runs only (scripts/windows-rust-tests.sh).
 */
#include <windows.h>

/* RtlGenRandom, exported by advapi32 under this name. */
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x7fffffff ? 0x7fffffff : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
