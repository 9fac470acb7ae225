/* test_quant_formats.c — E4M3 / E5M2 / UE8M0 / E2M1 codecs against hand-computed values:
 * decoding tables, round-to-nearest-even ties, saturation, NaN, nibble packing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "core/fp4.h"
#include "core/fp8.h"

static void e4m3_decodes_known_codes(void **state)
{
    assert_true(qs_e4m3_to_f32(0x38) == 1.0f);
    assert_true(qs_e4m3_to_f32(0x40) == 2.0f);
    assert_true(qs_e4m3_to_f32(0x7E) == 448.0f);
    assert_true(qs_e4m3_to_f32(0xFE) == -448.0f);
    assert_true(qs_e4m3_to_f32(0x01) == 0.001953125f); /* 2^-9, smallest subnormal */
    assert_true(qs_e4m3_to_f32(0x08) == 0.015625f);    /* 2^-6, smallest normal */
    assert_true(qs_e4m3_to_f32(0x07) == 7.0f / 512.0f);
    assert_true(qs_e4m3_to_f32(0x80) == 0.0f && signbit(qs_e4m3_to_f32(0x80)));
    assert_true(isnan(qs_e4m3_to_f32(0x7F)) && isnan(qs_e4m3_to_f32(0xFF)));
    const float *lut = qs_e4m3_table();
    for (int i = 0; i < 256; i++)
        if (!isnan(lut[i]))
            assert_true(lut[i] == qs_e4m3_to_f32((uint8_t)i));
}

static void e4m3_encodes_with_ties_to_even_and_saturation(void **state)
{
    assert_int_equal(qs_f32_to_e4m3(1.0f), 0x38);
    assert_int_equal(qs_f32_to_e4m3(-2.0f), 0xC0);
    assert_int_equal(qs_f32_to_e4m3(448.0f), 0x7E);
    assert_int_equal(qs_f32_to_e4m3(464.0f), 0x7E);   /* would round to the NaN slot: saturates */
    assert_int_equal(qs_f32_to_e4m3(1e9f), 0x7E);
    assert_int_equal(qs_f32_to_e4m3(-1e9f), 0xFE);
    assert_int_equal(qs_f32_to_e4m3(INFINITY), 0x7E);
    assert_int_equal(qs_f32_to_e4m3(NAN), 0x7F);
    assert_int_equal(qs_f32_to_e4m3(1.0625f), 0x38);  /* tie 1.0 / 1.125 -> even mantissa 0 */
    assert_int_equal(qs_f32_to_e4m3(1.1875f), 0x3A);  /* tie 1.125 / 1.25 -> even mantissa 2 */
    assert_int_equal(qs_f32_to_e4m3(1.07f), 0x39);    /* above the tie -> 1.125 */
    assert_int_equal(qs_f32_to_e4m3(0.0009765625f), 0x00); /* 2^-10: tie 0 / 2^-9 -> 0 */
    assert_int_equal(qs_f32_to_e4m3(0.0029296875f), 0x02); /* 1.5 * 2^-9 -> 2 * 2^-9 */
    assert_int_equal(qs_f32_to_e4m3(0.0152f), 0x08);  /* rounds up from subnormal to min normal */
    assert_int_equal(qs_f32_to_e4m3(240.0f), 0x77);   /* 1.875 * 2^7 */
    assert_int_equal(qs_f32_to_e4m3(-0.0f), 0x80);
    /* every finite code survives decode -> encode */
    for (int i = 0; i < 256; i++)
        if ((i & 0x7F) != 0x7F)
            assert_int_equal(qs_f32_to_e4m3(qs_e4m3_to_f32((uint8_t)i)), i);
}

static void e5m2_and_e8m0_round_trip(void **state)
{
    assert_true(qs_e5m2_to_f32(0x3C) == 1.0f);
    assert_true(qs_e5m2_to_f32(0x7B) == 57344.0f);
    assert_true(isinf(qs_e5m2_to_f32(0x7C)));
    assert_true(isnan(qs_e5m2_to_f32(0x7D)));
    assert_int_equal(qs_f32_to_e5m2(1e9f), 0x7B);
    for (int i = 0; i < 256; i++)
        if (((i >> 2) & 0x1F) != 31)
            assert_int_equal(qs_f32_to_e5m2(qs_e5m2_to_f32((uint8_t)i)), i);
    assert_true(qs_e8m0_to_f32(127) == 1.0f);
    assert_true(qs_e8m0_to_f32(130) == 8.0f);
    assert_true(isnan(qs_e8m0_to_f32(0xFF)));
    assert_int_equal(qs_f32_to_e8m0(1.0f), 127);
    assert_int_equal(qs_f32_to_e8m0(2.9f), 128);   /* nearer 2 than 4 */
    assert_int_equal(qs_f32_to_e8m0(3.0f), 129);   /* midpoint goes up */
    assert_int_equal(qs_f32_to_e8m0(0.0f), 0xFF);
    for (int i = 0; i < 255; i++)
        assert_int_equal(qs_f32_to_e8m0(qs_e8m0_to_f32((uint8_t)i)), i);
}

static void e2m1_table_rounding_and_packing(void **state)
{
    static const float mags[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
    for (int c = 0; c < 16; c++) {
        float v = (c & 8) ? -mags[c & 7] : mags[c & 7];
        assert_true(qs_e2m1_to_f32((uint8_t)c) == v);
        if (c != 8)
            assert_int_equal(qs_f32_to_e2m1(v), c);
    }
    assert_int_equal(qs_f32_to_e2m1(0.25f), 0);  /* tie 0 / 0.5 -> 0 */
    assert_int_equal(qs_f32_to_e2m1(0.75f), 2);  /* tie 0.5 / 1 -> 1 */
    assert_int_equal(qs_f32_to_e2m1(1.25f), 2);  /* tie 1 / 1.5 -> 1 */
    assert_int_equal(qs_f32_to_e2m1(1.75f), 4);  /* tie 1.5 / 2 -> 2 */
    assert_int_equal(qs_f32_to_e2m1(2.5f), 4);   /* tie 2 / 3 -> 2 */
    assert_int_equal(qs_f32_to_e2m1(3.5f), 6);   /* tie 3 / 4 -> 4 */
    assert_int_equal(qs_f32_to_e2m1(5.0f), 6);   /* tie 4 / 6 -> 4 */
    assert_int_equal(qs_f32_to_e2m1(5.01f), 7);
    assert_int_equal(qs_f32_to_e2m1(100.0f), 7);
    assert_int_equal(qs_f32_to_e2m1(-100.0f), 15);
    assert_int_equal(qs_f32_to_e2m1(-0.6f), 9);
    uint8_t codes[5] = {1, 2, 3, 0xF, 7}, packed[3], back[5];
    qs_fp4_pack(codes, 5, packed);
    assert_int_equal(packed[0], 0x21);   /* element 0 in the low nibble */
    assert_int_equal(packed[1], 0xF3);
    assert_int_equal(packed[2], 0x07);   /* odd count: high nibble 0 */
    qs_fp4_unpack(packed, 5, back);
    assert_memory_equal(codes, back, 5);
    assert_int_equal(qs_fp4_code(packed, 3), 0xF);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(e4m3_decodes_known_codes),
        cmocka_unit_test(e4m3_encodes_with_ties_to_even_and_saturation),
        cmocka_unit_test(e5m2_and_e8m0_round_trip),
        cmocka_unit_test(e2m1_table_rounding_and_packing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
