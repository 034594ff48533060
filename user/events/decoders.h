/* The standard set of record decoders (egress, confine, audit and the resolver's netns
 * records), registered with a collector by whoever assembles the pipeline: egretd and the
 * tests that decode records.
 */
#ifndef EGRET_DECODERS_H
#define EGRET_DECODERS_H

struct collector;

/* 0 or -errno (collector__register's) */
int decoders__register(struct collector *c);

#endif /* EGRET_DECODERS_H */
