# The viper kernel of fixedpoint.py: the same integers as fixedpoint.layer_plain, bit for bit.
# Importable on MicroPython ports with the viper emitter only (fixedpoint.py falls back otherwise).
# Viper quirks handled here: ptr16/ptr32 loads are zero-extended (sign-extend by hand with the
# xor trick), constants of 2**30 or more are not small ints on 32-bit ports (built at run time),
# and no constant index of 256 or more (the Xtensa emitter's load then clobbers the pointer).
import micropython


@micropython.viper
def layer(W: ptr16, b: ptr32, x: ptr16, y: ptr16, n_in: int, n_out: int, act: int, s_out: int, s_14: int, s_14_out: int, T: ptr16, P: ptr16):
    sign16 = 0x8000
    one = 1
    sign32 = one << 31  # at run time: the literal 1 << 31 would be a big-int object (mpy-cross)
    # on 32-bit ports sign32 is the word 0x80000000 and the xor below changes nothing
    r_out = (1 << (s_out - 1)) if s_out > 0 else 0
    r_14 = (1 << (s_14 - 1)) if s_14 > 0 else 0
    r_14_out = (1 << (s_14_out - 1)) if s_14_out > 0 else 0
    lim = 1 << 21
    k = 0
    for o in range(n_out):
        acc = ((int(b[o]) ^ sign32) - sign32)
        for i in range(n_in):
            acc += ((int(W[k + i]) ^ sign16) - sign16) * ((int(x[i]) ^ sign16) - sign16)
        k += n_in
        if act <= 1:  # identity 0, relu 1
            if act == 1 and acc < 0:
                acc = 0
            if s_out > 0:
                v = (acc + r_out) >> s_out
            elif s_out < 0:  # saturating left shift
                m = 32767 >> (0 - s_out)
                v = 32767 if acc > m else (-32767 if acc < 0 - m else acc << (0 - s_out))
            else:
                v = acc
        else:
            if s_14 > 0:
                x14 = (acc + r_14) >> s_14
            elif s_14 < 0:
                m = lim >> (0 - s_14)
                x14 = lim if acc > m else (0 - lim if acc < 0 - m else acc << (0 - s_14))
            else:
                x14 = acc
            if x14 > lim:
                x14 = lim
            elif x14 < 0 - lim:
                x14 = 0 - lim
            # table argument: |x| for tanh (odd) and the CDF (Phi(-x) = 1 - Phi(x)); x / 2 for sigmoid
            a = x14 >> 1 if act == 3 else x14
            neg = a < 0
            if neg:
                a = 0 - a
            tab = P if act == 4 else T
            j = a >> 8  # Q14 argument, table step 1/64
            if j >= 512:
                # the index in a variable: MicroPython's xtensa(win) viper code for a constant index
                # of 256 or more overwrites the base pointer (v1.28.0) and read address 1024
                j = 512
                t = int(tab[j])
            else:
                t0 = int(tab[j])
                t = t0 + (((int(tab[j + 1]) - t0) * (a & 255)) >> 8)
            if act == 2:  # tanh
                f = 0 - t if neg else t
            elif act == 3:  # sigmoid = (1 + tanh(x / 2)) / 2
                f = (16384 + (0 - t if neg else t)) >> 1
            elif x14 >= 131072:  # gelu beyond the table (8 in Q14): x
                f = x14
            elif x14 <= -131072:
                f = 0
            else:
                p = 16384 - t if neg else t
                f = ((x14 >> 1) * p) >> 13
            if s_14_out > 0:
                v = (f + r_14_out) >> s_14_out
            elif s_14_out < 0:
                m = 32767 >> (0 - s_14_out)
                v = 32767 if f > m else (-32767 if f < 0 - m else f << (0 - s_14_out))
            else:
                v = f
        if v > 32767:
            v = 32767
        elif v < -32767:
            v = -32767
        y[o] = v
