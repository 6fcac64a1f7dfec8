/* The entry point both parser harnesses share: with -DEDGEC_LIBFUZZER a libFuzzer target, otherwise a main()
 * that runs every input of stdin, given as [u32 LE length][bytes]..., and prints how many it ran.
 * Included at the end of a harness that defines `static int fuzz_one(const uint8_t *data, size_t n)`. */
#ifdef EDGEC_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_one(data, size); }
#else
int main(void)
{
    unsigned long cases = 0;
    uint8_t hdr[4];
    while (fread(hdr, 1, 4, stdin) == 4) {
        size_t n = hdr[0] | (size_t)hdr[1] << 8 | (size_t)hdr[2] << 16 | (size_t)hdr[3] << 24;
        uint8_t *data = malloc(n ? n : 1);
        if (fread(data, 1, n, stdin) != n) return 3;
        fuzz_one(data, n);
        free(data);
        cases++;
    }
    printf("%lu cases\n", cases);
    return 0;
}
#endif
