/* Any protobuf-c message as one line of JSON, by reflection over its descriptor: field names as
 * in the .proto, enums by name, fields at their default value left out (as protojson does).
 */
#ifndef EGRET_PBJSON_H
#define EGRET_PBJSON_H

#include <stdio.h>
#include <protobuf-c/protobuf-c.h>

void pbjson__print(FILE *out, const ProtobufCMessage *msg);
void pbjson__string(FILE *out, const char *s, size_t len);

#endif /* EGRET_PBJSON_H */
