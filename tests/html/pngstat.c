/* SPDX-License-Identifier: MIT */
/*
 * pngstat.c - what the HTML test needs to know about a screenshot, without
 * an image library: decode an 8-bit RGB or RGBA PNG (what headless
 * chromium writes) with zlib and print
 *
 *   size W H
 *   colors N              distinct RGB values
 *   ink P                 pixels that differ from the top-left one (the page)
 *   color RRGGBB C V H    pixels of that exact colour, its longest vertical
 *                         and horizontal run
 *
 * for each RRGGBB argument. Exit 2 on a file it cannot read.
 *
 *   pngstat shot.png 4e79a7 e15759
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

struct img {
	uint32_t w, h;
	unsigned bpp;		/* bytes per pixel: 3 or 4 */
	unsigned char *px;	/* h rows of w * bpp bytes, unfiltered */
};

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int fail(const char *what)
{
	fprintf(stderr, "pngstat: %s\n", what);
	return 2;
}

/* The concatenated IDAT data of the file in @buf (@n bytes). */
static unsigned char *idat(const unsigned char *buf, size_t n, struct img *im, size_t *len)
{
	unsigned char *out = NULL;
	size_t o = 0;

	*len = 0;
	for (size_t i = 8; i + 12 <= n;) {
		uint32_t l = be32(buf + i);

		if (l > n - i - 12)
			break;
		if (memcmp(buf + i + 4, "IHDR", 4) == 0 && l >= 13) {
			im->w = be32(buf + i + 8);
			im->h = be32(buf + i + 12);
			if (buf[i + 16] != 8 || (buf[i + 17] != 2 && buf[i + 17] != 6) || buf[i + 20])
				return NULL;	/* only 8-bit RGB(A), not interlaced */
			im->bpp = buf[i + 17] == 6 ? 4 : 3;
		} else if (memcmp(buf + i + 4, "IDAT", 4) == 0) {
			unsigned char *p = realloc(out, o + l + 1);

			if (!p)
				break;
			out = p;
			memcpy(out + o, buf + i + 8, l);
			o += l;
		}
		i += 12 + (size_t)l;
	}
	*len = o;
	return out;
}

static int paeth(int a, int b, int c)
{
	int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);

	return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Undo the per-row filters (PNG spec §9) in place into im->px. */
static int unfilter(struct img *im, const unsigned char *raw, size_t rawlen)
{
	size_t stride = (size_t)im->w * im->bpp;

	if (rawlen < (stride + 1) * im->h)
		return -1;
	im->px = malloc(stride * im->h);
	if (!im->px)
		return -1;
	for (uint32_t y = 0; y < im->h; y++) {
		const unsigned char *in = raw + y * (stride + 1);
		unsigned char *row = im->px + y * stride, *up = y ? row - stride : NULL;

		for (size_t x = 0; x < stride; x++) {
			int a = x >= im->bpp ? row[x - im->bpp] : 0, b = up ? up[x] : 0;
			int c = up && x >= im->bpp ? up[x - im->bpp] : 0, f = in[0], v = in[1 + x];

			v += f == 1 ? a : f == 2 ? b : f == 3 ? (a + b) / 2 : f == 4 ? paeth(a, b, c) : 0;
			row[x] = (unsigned char)v;
		}
	}
	return 0;
}

static uint32_t rgb(const struct img *im, uint32_t x, uint32_t y)
{
	const unsigned char *p = im->px + ((size_t)y * im->w + x) * im->bpp;

	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void summary(const struct img *im)
{
	size_t n = (size_t)im->w * im->h, distinct = 0, ink = 0;
	uint32_t *all = malloc(n * sizeof *all), bg = rgb(im, 0, 0);

	for (size_t i = 0; all && i < n; i++) {
		all[i] = rgb(im, (uint32_t)(i % im->w), (uint32_t)(i / im->w));
		ink += all[i] != bg;
	}
	if (all) {
		qsort(all, n, sizeof *all, cmp_u32);
		for (size_t i = 0; i < n; i++)
			distinct += i == 0 || all[i] != all[i - 1];
	}
	printf("size %u %u\ncolors %zu\nink %zu\n", im->w, im->h, distinct, ink);
	free(all);
}

static void colour(const struct img *im, uint32_t want)
{
	size_t count = 0;
	uint32_t vmax = 0, hmax = 0;

	for (uint32_t y = 0; y < im->h; y++)
		for (uint32_t x = 0, run = 0; x < im->w; x++) {
			run = rgb(im, x, y) == want ? run + 1 : 0;
			count += run > 0;
			hmax = run > hmax ? run : hmax;
		}
	for (uint32_t x = 0; x < im->w; x++)
		for (uint32_t y = 0, run = 0; y < im->h; y++) {
			run = rgb(im, x, y) == want ? run + 1 : 0;
			vmax = run > vmax ? run : vmax;
		}
	printf("color %06x %zu %u %u\n", want, count, vmax, hmax);
}

static unsigned char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	long len;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 8 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)len)) && fread(buf, 1, (size_t)len, f) != (size_t)len) {
		free(buf);
		buf = NULL;
	}
	*n = buf ? (size_t)len : 0;
	fclose(f);
	return buf;
}

int main(int argc, char **argv)
{
	struct img im = { 0 };
	size_t n, zlen, rawlen;
	unsigned char *buf, *z, *raw;
	uLongf dest;

	if (argc < 2)
		return fail("usage: pngstat FILE.png [RRGGBB...]");
	buf = slurp(argv[1], &n);
	if (!buf || memcmp(buf, "\x89PNG\r\n\x1a\n", 8) != 0)
		return fail("not a PNG file");
	z = idat(buf, n, &im, &zlen);
	if (!z || !im.w || !im.h || im.w > 1u << 15 || im.h > 1u << 15)
		return fail("unsupported PNG (8-bit RGB or RGBA only)");
	rawlen = ((size_t)im.w * im.bpp + 1) * im.h;
	raw = malloc(rawlen);
	dest = rawlen;
	if (!raw || uncompress(raw, &dest, z, zlen) != Z_OK || unfilter(&im, raw, dest) != 0)
		return fail("corrupt image data");
	summary(&im);
	for (int i = 2; i < argc; i++)
		colour(&im, (uint32_t)strtoul(argv[i], NULL, 16));
	free(im.px);
	free(raw);
	free(z);
	free(buf);
	return 0;
}
