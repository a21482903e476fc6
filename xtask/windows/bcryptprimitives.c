/* ProcessPrng for Wine 8, which has no bcryptprimitives.dll: Rust's standard library for Windows
   imports ProcessPrng from it. Built with mingw-w64 into the test Wine prefix only (never shipped);
   it fills the buffer from advapi32's RtlGenRandom (SystemFunction036), which Wine has. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG len);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, n)) return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
