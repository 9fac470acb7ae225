/* byte_level.c — the GPT-2 byte <-> unicode table that byte-level BPE (Llama-3, Qwen) uses:
 * printable Latin-1 bytes stand for themselves, the other 68 bytes for U+0100.. in byte order. */
#include "tokenizer/tokenizer_internal.h"

static bool byte_is_printable(int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

static uint32_t byte_to_cp(uint8_t b)
{
    if (byte_is_printable(b))
        return b;
    uint32_t n = 0;
    for (int i = 0; i < b; i++)
        if (!byte_is_printable(i))
            n++;
    return 256 + n;
}

int qs_byte_level_char(uint8_t b, char out[2])
{
    uint32_t cp = byte_to_cp(b);
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

/* Code points used by the table are all below 324; cp_byte[cp] is the byte + 1 (0 = none). */
static uint16_t cp_byte[324];
static pthread_once_t cp_byte_once = PTHREAD_ONCE_INIT;

static void cp_byte_init(void)
{
    for (int b = 0; b < 256; b++)
        cp_byte[byte_to_cp((uint8_t)b)] = (uint16_t)(b + 1);
}

int qs_byte_level_byte(uint32_t cp)
{
    pthread_once(&cp_byte_once, cp_byte_init);
    return cp < 324 ? (int)cp_byte[cp] - 1 : -1;
}
