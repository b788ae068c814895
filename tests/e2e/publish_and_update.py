#!/usr/bin/env python3
"""Publishes a nearby-format service through Avahi's D-Bus API, then changes its TXT record in place
(EntryGroup.UpdateServiceTxt), as a node changing its discovery info would. For the e2e test of
`updated` events.

    publish_and_update.py SERVICE_TYPE INSTANCE_NAME
"""
import sys
import time

import dbus

service, name = sys.argv[1], sys.argv[2]
bus = dbus.SystemBus()
server = dbus.Interface(bus.get_object("org.freedesktop.Avahi", "/"), "org.freedesktop.Avahi.Server")
group = dbus.Interface(bus.get_object("org.freedesktop.Avahi", server.EntryGroupNew()),
                       "org.freedesktop.Avahi.EntryGroup")


def txt(*entries):
    return dbus.Array([dbus.Array([dbus.Byte(b) for b in e.encode()], signature="y") for e in entries],
                      signature="ay")


IF_UNSPEC, PROTO_UNSPEC = -1, -1
regtype = f"_{service}._tcp"
group.AddService(IF_UNSPEC, PROTO_UNSPEC, dbus.UInt32(0), name, regtype, "", "", dbus.UInt16(7777),
                 txt("_d=Updater", "v=1", "_nb=1"))
group.Commit()
time.sleep(3)
group.UpdateServiceTxt(IF_UNSPEC, PROTO_UNSPEC, dbus.UInt32(0), name, regtype, "local",
                       txt("_d=Updater", "v=2", "_nb=1"))
print("updated", flush=True)
time.sleep(60)
