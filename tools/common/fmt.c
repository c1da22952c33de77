/* SPDX-License-Identifier: MIT */
/*
 * fmt.c - RFC 3339 time for the tools' records (fmt.h).
 */
#include <stdio.h>
#include <string.h>

#include "fmt.h"

/* Fixed-width decimal, @w digits. */
static void fmt_fixed(char *p, uint64_t v, int w)
{
	while (w-- > 0) {
		p[w] = (char)('0' + v % 10);
		v /= 10;
	}
}

/*
 * Proleptic Gregorian date of day @z (days since 1970-01-01), by counting
 * 400-year eras of 146097 days from 0000-03-01 (so the leap day ends a
 * year).
 */
static void civil_date(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era, yy;
	uint64_t doe, yoe, doy, mp;

	z += 719468; /* days from 0000-03-01 to 1970-01-01 */
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (uint64_t)(z - era * 146097);                            /* [0, 146096] */
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;    /* [0, 399] */
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);                  /* [0, 365] */
	mp = (5 * doy + 2) / 153;                                       /* March = 0 */
	*d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	*m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	yy = (int64_t)yoe + era * 400;
	*y = yy + (*m <= 2);
}

size_t bbx_fmt_time(char *p, int64_t wall_ns)
{
	/* The date part changes once a second: keep the last one. */
	static int64_t csec = INT64_MIN;
	static char cbuf[40];
	static size_t clen;
	int64_t sec = wall_ns / 1000000000, ns = wall_ns % 1000000000;

	if (ns < 0) {
		ns += 1000000000;
		sec--;
	}
	if (sec != csec) {
		int64_t day = sec / 86400, rem = sec % 86400, y;
		unsigned m, d;

		if (rem < 0) {
			rem += 86400;
			day--;
		}
		civil_date(day, &y, &m, &d);
		if (y >= 0 && y <= 9999) {
			fmt_fixed(cbuf, (uint64_t)y, 4);
			clen = 4;
		} else {
			clen = (size_t)snprintf(cbuf, 24, "%lld", (long long)y);
		}
		cbuf[clen] = '-';
		fmt_fixed(cbuf + clen + 1, m, 2);
		cbuf[clen + 3] = '-';
		fmt_fixed(cbuf + clen + 4, d, 2);
		cbuf[clen + 6] = 'T';
		fmt_fixed(cbuf + clen + 7, (uint64_t)(rem / 3600), 2);
		cbuf[clen + 9] = ':';
		fmt_fixed(cbuf + clen + 10, (uint64_t)(rem / 60 % 60), 2);
		cbuf[clen + 12] = ':';
		fmt_fixed(cbuf + clen + 13, (uint64_t)(rem % 60), 2);
		clen += 15;
		csec = sec;
	}
	if (clen <= 24)
		memcpy(p, cbuf, 24); /* years 0-9999 (19 bytes): one fixed-size move */
	else
		memcpy(p, cbuf, clen);
	p[clen] = '.';
	fmt_ns9(p + clen + 1, (uint32_t)ns);
	p[clen + 10] = 'Z';
	return clen + 11;
}
