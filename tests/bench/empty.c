/* SPDX-License-Identifier: MIT */
/*
 * empty.c - the floor for `make bench`: a C program that only starts and
 * exits. It is linked with memc's libraries (libunistring, libm), so
 * memc's time over it is memc's own work, not the dynamic loader's.
 */
int main(void)
{
	return 0;
}
